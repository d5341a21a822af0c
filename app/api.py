"""flask-smorest's ``Api`` and ``Blueprint`` with this service's error shape and JSON body reading, so
``/openapi.json`` documents what clients get."""
from copy import deepcopy

from flask_smorest import Api as SmorestApi
from flask_smorest import Blueprint as SmorestBlueprint
from flask_smorest.utils import deepupdate

from app import error_handlers
from app.jsonbody import JsonBodyParser


class Api(SmorestApi):
    """flask-smorest's ``Api`` whose OpenAPI document is built when first read, not at start.

    Documenting the views is most of what ``create_app`` costs (about 0.1 s of CPU, measured with
    cProfile on the suite): a worker that never serves ``/openapi.json`` need not pay it, and the
    test suite makes an app per test. Every reader goes through ``spec`` (``/openapi.json``,
    ``flask openapi print``), which documents the blueprints registered so far first.
    """

    ERROR_SCHEMA = error_handlers.ErrorSchema

    def __init__(self, *args, **kwargs):
        self._undocumented = []
        self._spec = None
        super().__init__(*args, **kwargs)

    @property
    def spec(self):
        while self._undocumented:
            blp, app, name, parameters = self._undocumented.pop(0)
            blp.register_views_in_doc(self, app, self._spec, name=name, parameters=parameters)
            self._spec.tag({"name": name, "description": blp.description})
        return self._spec

    @spec.setter
    def spec(self, value):
        # init_app makes a new document for each app: what was left to document belonged to the last one.
        self._undocumented = []
        self._spec = value

    def register_blueprint(self, blp, *, parameters=None, **options):
        """Register ``blp`` in the app now and in the OpenAPI document when it is first read."""
        name = options.get("name", blp.name)
        self._app.extensions["flask-smorest"]["blp_name_to_api"][name] = self
        self._app.register_blueprint(blp, **options)
        self._undocumented.append((blp, self._app, name, parameters))

    def handle_http_exception(self, error):
        return error_handlers.handle_http_exception(error)

    def _register_error_handlers(self):
        # register_errorhandlers() installs the handlers; flask-smorest's own would shadow them.
        pass


class Blueprint(SmorestBlueprint):
    """A blueprint whose JSON bodies are read by ``app.jsonbody`` (400 ``invalid_json``, 415), documented so."""

    ARGUMENTS_PARSER = JsonBodyParser()

    @staticmethod
    def doc(**kwargs):
        """flask-smorest's ``Blueprint.doc``: ``kwargs`` merged into the view's OpenAPI operation as written.

        Without its wrapper, and copying only the manual part of the view's document: flask-smorest's deep-copies
        all of it, the schemas the view's inner decorators stored included, at every ``doc`` a view is given
        (four or five for a billing view): about 5% of the instructions of ``import wsgi`` (callgrind: 3.33 to
        3.17 billion), paid by every ``flask`` process. The view's own document is never changed: it gets a new one.
        """

        def decorator(func):
            apidoc = dict(getattr(func, "_apidoc", {}))
            apidoc["manual_doc"] = deepupdate(deepcopy(apidoc.get("manual_doc", {})), kwargs)
            func._apidoc = apidoc
            return func

        return decorator

    def arguments(self, schema, *, location="json", **kwargs):
        # One instance for every request: given a class, webargs makes a new one per request, and marshmallow
        # deep-copies its fields each time (a tenth of a consume's CPU). Loading keeps no state on the instance.
        schema = schema() if isinstance(schema, type) else schema
        decorate = super().arguments(schema, location=location, **kwargs)
        if location != "json":
            return decorate

        def decorator(func):
            view = decorate(func)
            view._apidoc["arguments"]["responses"].update({400: "BAD_REQUEST", 415: "UNSUPPORTED_MEDIA_TYPE"})
            return view

        return decorator
