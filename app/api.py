"""flask-smorest's ``Api`` with this service's error shape, so ``/openapi.json`` documents what clients get."""
from flask_smorest import Api as SmorestApi

from app import errors


class Api(SmorestApi):
    ERROR_SCHEMA = errors.ErrorSchema

    def handle_http_exception(self, error):
        return errors.handle_http_exception(error)

    def _register_error_handlers(self):
        # register_errorhandlers() installs the handlers; flask-smorest's own would shadow them.
        pass
