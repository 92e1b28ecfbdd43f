"""Live chats on websockets (docs/chat.md): the seats and pairs, the two modes (two workers in the
ED lobby, ``empathetic``; one worker with a bot, ``bot``) behind one dispatch (``modes``), the
consumer, the chat's Celery tasks and its locks."""
