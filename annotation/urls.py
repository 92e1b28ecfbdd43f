from django.urls import path

from annotation import views

app_name = "annotation"

urlpatterns = [
    path("task/<slug:slug>/", views.task, name="task"),
    path("task/<slug:slug>/submit/", views.task_submit, name="task_submit"),
    path("task/<slug:slug>/done/", views.task_done, name="task_done"),
]
