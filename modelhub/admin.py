from django.contrib import admin

from modelhub.models import Generation, ModelEndpoint


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    list_display = ["name", "backend", "created_at"]
    list_filter = ["backend"]
    search_fields = ["name", "notes"]


@admin.register(Generation)
class GenerationAdmin(admin.ModelAdmin):
    list_display = ["endpoint", "context_hash", "response", "created_at"]
    list_filter = ["endpoint"]
    search_fields = ["response"]
