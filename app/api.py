"""flask-smorest's ``Api`` and ``Blueprint`` with this service's error shape and JSON body reading, so
``/openapi.json`` documents what clients get."""
from flask_smorest import Api as SmorestApi
from flask_smorest import Blueprint as SmorestBlueprint

from app import error_handlers
from app.jsonbody import JsonBodyParser


class Api(SmorestApi):
    ERROR_SCHEMA = error_handlers.ErrorSchema

    def handle_http_exception(self, error):
        return error_handlers.handle_http_exception(error)

    def _register_error_handlers(self):
        # register_errorhandlers() installs the handlers; flask-smorest's own would shadow them.
        pass


class Blueprint(SmorestBlueprint):
    """A blueprint whose JSON bodies are read by ``app.jsonbody`` (400 ``invalid_json``, 415), documented so."""

    ARGUMENTS_PARSER = JsonBodyParser()

    def arguments(self, schema, *, location="json", **kwargs):
        decorate = super().arguments(schema, location=location, **kwargs)
        if location != "json":
            return decorate

        def decorator(func):
            view = decorate(func)
            view._apidoc["arguments"]["responses"].update({400: "BAD_REQUEST", 415: "UNSUPPORTED_MEDIA_TYPE"})
            return view

        return decorator
