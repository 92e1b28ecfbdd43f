from django.urls import path

from dashboard import views, wizard

app_name = "dashboard"

urlpatterns = [
    path("", views.campaign_list, name="campaigns"),
    path("c/<slug:slug>/", views.campaign_detail, name="campaign"),
    path("c/<slug:slug>/progress/", views.campaign_progress, name="progress"),
    path("c/<slug:slug>/spot-check/", views.campaign_spotcheck, name="spotcheck"),
    path("c/<slug:slug>/jobs/", views.job_create, name="job_create"),
    path("c/<slug:slug>/jobs/<int:job_id>/", views.job_status, name="job_status"),
    path(
        "c/<slug:slug>/jobs/<int:job_id>/files/<str:name>",
        views.job_file,
        name="job_file",
    ),
    path("c/<slug:slug>/workers/", views.worker_action, name="worker_action"),
    path("new/", wizard.wizard_start, name="wizard"),
    path("new/<slug:slug>/settings/", wizard.wizard_settings, name="wizard_settings"),
    path("new/<slug:slug>/items/", wizard.wizard_items, name="wizard_items"),
    path("new/<slug:slug>/items/pending/", wizard.wizard_items_pending, name="wizard_pending"),
    path("new/<slug:slug>/items/status/", wizard.wizard_items_status, name="wizard_status"),
    path("new/<slug:slug>/review/", wizard.wizard_review, name="wizard_review"),
    path("new/<slug:slug>/launch/", wizard.wizard_launch, name="wizard_launch"),
]
