from django.urls import path

from dashboard import browse, publishing, views, wizard

app_name = "dashboard"

urlpatterns = [
    path("", views.campaign_list, name="campaigns"),
    path("c/<slug:slug>/", views.campaign_detail, name="campaign"),
    path("c/<slug:slug>/progress/", views.campaign_progress, name="progress"),
    path("c/<slug:slug>/leaderboard/", views.campaign_leaderboard, name="leaderboard"),
    path(
        "c/<slug:slug>/leaderboard/data/",
        views.campaign_leaderboard_data,
        name="leaderboard_data",
    ),
    path("c/<slug:slug>/spot-check/", views.campaign_spotcheck, name="spotcheck"),
    path("c/<slug:slug>/jobs/", views.job_create, name="job_create"),
    path("c/<slug:slug>/items/", browse.items_browse, name="items"),
    path("c/<slug:slug>/items/<int:item_id>/", browse.item_preview, name="item_preview"),
    path("c/<slug:slug>/consents/", browse.consents_page, name="consents"),
    path("c/<slug:slug>/judges/", views.judges_page, name="judges"),
    path("c/<slug:slug>/judges/run/", views.judge_run_start, name="judge_run"),
    path("c/<slug:slug>/judges/report/", views.judges_report_start, name="judges_report"),
    path("c/<slug:slug>/provider/", publishing.provider_page, name="provider"),
    path("c/<slug:slug>/provider/publish/", publishing.provider_publish, name="provider_publish"),
    path(
        "c/<slug:slug>/provider/<int:publication_id>/extend/",
        publishing.provider_extend,
        name="provider_extend",
    ),
    path(
        "c/<slug:slug>/provider/<int:publication_id>/state/",
        publishing.provider_state,
        name="provider_state",
    ),
    path("c/<slug:slug>/jobs/<int:job_id>/", views.job_status, name="job_status"),
    path(
        "c/<slug:slug>/jobs/<int:job_id>/files/<str:name>",
        views.job_file,
        name="job_file",
    ),
    path("c/<slug:slug>/workers/", views.worker_action, name="worker_action"),
    path("c/<slug:slug>/links/", views.worker_links_csv, name="worker_links"),
    path("c/<slug:slug>/workers/approve/", views.workers_approve, name="workers_approve"),
    path("c/<slug:slug>/workers/review/", views.campaign_review, name="campaign_review"),
    path("c/<slug:slug>/bonuses/", views.bonuses_upload, name="bonuses_upload"),
    path("c/<slug:slug>/payments/", views.payment_action, name="payment_action"),
    path("c/<slug:slug>/status/", views.campaign_status, name="campaign_status"),
    path("c/<slug:slug>/budget/", views.campaign_budget, name="campaign_budget"),
    path("new/", wizard.wizard_start, name="wizard"),
    path("new/<slug:slug>/settings/", wizard.wizard_settings, name="wizard_settings"),
    path("new/<slug:slug>/items/", wizard.wizard_items, name="wizard_items"),
    path("new/<slug:slug>/items/pending/", wizard.wizard_items_pending, name="wizard_pending"),
    path("new/<slug:slug>/items/status/", wizard.wizard_items_status, name="wizard_status"),
    path("new/<slug:slug>/review/", wizard.wizard_review, name="wizard_review"),
    path("new/<slug:slug>/launch/", wizard.wizard_launch, name="wizard_launch"),
]
