from django.apps import AppConfig


class ApiConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "api"
    verbose_name = "REST API"

    def ready(self) -> None:
        # Input refused before any view (a NUL in a parameter) gets the API's one error body.
        from api.errors import error_response
        from evalsite.inputs import error_body_register

        error_body_register("/api/", lambda message: error_response(400, message))
