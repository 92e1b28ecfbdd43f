from django.urls import path

from workerpages import training, views

app_name = "annotation"

urlpatterns = [
    path("task/<slug:slug>/", views.task, name="task"),
    path("task/<slug:slug>/consent/", views.task_consent, name="task_consent"),
    path("task/<slug:slug>/training/", training.task_training, name="task_training"),
    path("task/<slug:slug>/submit/", views.task_submit, name="task_submit"),
    path("task/<slug:slug>/done/", views.task_done, name="task_done"),
    path("task/<slug:slug>/withdraw/", views.task_withdraw, name="task_withdraw"),
]
