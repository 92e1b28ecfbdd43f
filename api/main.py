"""The API object: key authentication, the one error body, the routers, the schema."""

from ninja import NinjaAPI
from ninja.operation import Operation

from api import campaigns, datasets, endpoints, jobs, webhooks, workers
from api.auth import KeyAuth
from api.errors import StrictParser, handlers_install


class EvalsiteApi(NinjaAPI):
    """The API, its operations named by their functions (``campaign_create``), not ninja's
    module-prefixed ids: the generated client (clients/python) is called by these names."""

    def get_openapi_operation_id(self, operation: Operation) -> str:
        return str(operation.view_func.__name__)


api = EvalsiteApi(
    title="evalsite API",
    version="1",
    description=(
        "Campaigns, items, progress, reports, exports, workers and webhooks of evalsite, for the "
        "researcher who owns them; models, generation jobs and data sets, site-wide. "
        "Authenticate with `Authorization: Bearer <key>` "
        "(`python manage.py api_key create --user NAME`). Every 4xx answers "
        '`{"error": {"code", "message", "field"}}`. See docs/api.md.'
    ),
    urls_namespace="api",
    auth=KeyAuth(),
    parser=StrictParser(),
    openapi_url="/openapi.json",
    docs_url="/docs",
)
handlers_install(api)
api.add_router("/campaigns", campaigns.router)
api.add_router("/campaigns", jobs.router)
api.add_router("/campaigns", workers.router)
api.add_router("/campaigns", webhooks.router)
api.add_router("/models", endpoints.router)
api.add_router("/datasets", datasets.router)
