"""Websocket routes (evalsite/asgi.py mounts them)."""

from django.urls import path

from chat.consumers import ChatConsumer

websocket_urlpatterns = [
    path("ws/chat/<slug:slug>/", ChatConsumer.as_asgi()),
]
