"""The worker's pages (docs/architecture.md): task, consent, training, chat, end and withdraw
pages, served inside the providers' iframes."""
