"""WSGI entry point: ``gunicorn wsgi:app``; also the ``flask --app wsgi`` target."""
from app import create_app

app = create_app()
