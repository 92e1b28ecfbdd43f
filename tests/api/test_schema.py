"""The published schema and the docs page (no CDN at run time)."""

import json
import re

from django.test import Client
from openapi_spec_validator import OpenAPIV31SpecValidator

from api.main import api


def test_the_schema_is_published_without_a_key_and_is_the_apps_own(db) -> None:
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.") and schema == json.loads(
        json.dumps(api.get_openapi_schema())
    )
    assert schema["components"]["securitySchemes"]["KeyAuth"]["scheme"] == "bearer"
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for status in ("400", "401", "404", "422"):
                assert status in operation["responses"], (method, path, status)


def test_the_schema_is_valid_openapi_3_1(db) -> None:
    """Generators (openapi-python-client) and validators accept it: parameters carry their
    example as ``example``, not a JSON Schema ``examples`` list where OpenAPI wants a map."""
    schema = Client().get("/api/v1/openapi.json").json()
    assert schema["openapi"] == "3.1.0"
    errors = [error.message for error in OpenAPIV31SpecValidator(schema).iter_errors()]
    assert errors == []
    parameters = [
        p for ops in schema["paths"].values() for o in ops.values() for p in o.get("parameters", [])
    ]
    assert any(p.get("example") == "study-1" for p in parameters)


def test_the_docs_page_loads_nothing_from_another_host(db) -> None:
    page = Client().get("/api/v1/docs").content.decode()
    assert "swagger" in page.lower() and "/api/v1/openapi.json" in page
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and not [s for s in sources if s.startswith(("http:", "https:", "//"))]


def test_an_unknown_path_under_the_api_is_a_404_with_the_error_body(db) -> None:
    response = Client().get("/api/v1/campaigns/a/b/c/d/e")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_unknown_query_parameters_are_refused(api) -> None:
    response = api.get("/campaigns?limit=2&colour=blue")
    assert response.status_code == 422 and response.json()["error"]["field"] == "colour"


def test_a_method_the_path_does_not_take_is_a_405_with_the_error_body(api) -> None:
    response = api.client.delete("/api/v1/campaigns", headers=api.headers)
    assert response.status_code == 405 and "GET" in response["Allow"]
    assert response.json()["error"]["code"] == "method_not_allowed"
