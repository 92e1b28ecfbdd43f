"""The campaign page's job list: the jobs without their results (a report's whole snapshot)."""

from dashboard.models import Job
from dashboard.selectors import jobs_recent


def test_job_list_leaves_report_results_in_the_database(filled) -> None:
    Job.objects.create(
        campaign=filled,
        kind=Job.Kind.REPORT,
        status=Job.Status.DONE,
        result={"judgments": 3, "tables": {"big": {"rows": [[0.5] * 100] * 50}}},
        files=["report.html"],
    )
    jobs = jobs_recent(filled)
    assert [job.kind for job in jobs] == [Job.Kind.REPORT]
    assert "result" in jobs[0].get_deferred_fields()
    assert jobs[0].files == ["report.html"] and jobs[0].finished
