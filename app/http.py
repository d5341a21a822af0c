"""The HTTP surface every answer shares: JSON content type, ``nosniff``, bounded URLs, headers and bodies.

The service answers in JSON only, so its default content type is ``application/json``: an
``OPTIONS`` answer or a ``204`` is empty with that type, never ``text/html``. What the app can see,
it refuses as JSON with the request id: a URL longer than ``MAX_URL_LENGTH`` (414), a header field
longer than ``MAX_HEADER_FIELD_SIZE`` or all of them together longer than ``MAX_HEADER_SIZE`` (431),
and a chunked body over ``MAX_CONTENT_LENGTH`` (413). These limits sit below gunicorn's defaults
(request line 4,094 bytes, header field 8,190, 100 fields), so only requests past gunicorn's own
limits, or ones HTTP cannot parse, get gunicorn's answer (README "HTTP surface").
"""
import functools
import io

from flask import Response, make_response, request
from flask.sessions import SessionInterface

from app.errors import HeaderFieldsTooLarge, UriTooLong

# The common browser limit; this API's URLs are a path and at most two short query parameters.
MAX_URL_LENGTH = 2048
# Bytes of one ``Name: value`` line and of all of them; a bearer token or a Stripe-Signature
# carrying several signatures during a secret rotation is a few hundred.
MAX_HEADER_FIELD_SIZE = 4096
MAX_HEADER_SIZE = 16384

NO_STORE = {
    "Cache-Control": {
        "description": "no-store: the answer carries a secret that no cache may keep (RFC 6749 5.1)",
        "schema": {"type": "string", "enum": ["no-store"]},
    },
}


class JsonResponse(Response):
    """A response that is JSON unless a view says otherwise, empty ones included."""

    default_mimetype = "application/json"


class BoundedBody:
    """WSGI middleware: a chunked body is read up to ``limit + 1`` bytes and passed on with its length.

    werkzeug answers a ``Content-Length`` over ``MAX_CONTENT_LENGTH`` with 413, but it only cuts a
    chunked stream off at the limit, and the JSON parser then calls the truncated body invalid
    (400). With the length known, the same 413 applies to both.
    """

    def __init__(self, wsgi_app, limit):
        self.wsgi_app, self.limit = wsgi_app, limit

    def __call__(self, environ, start_response):
        if "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower() and environ.get("wsgi.input_terminated"):
            stream, chunks, size = environ["wsgi.input"], [], 0
            while size <= self.limit:
                chunk = stream.read(self.limit + 1 - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            environ["wsgi.input"] = io.BytesIO(b"".join(chunks))
            environ["CONTENT_LENGTH"] = str(size)
            del environ["HTTP_TRANSFER_ENCODING"]
        return self.wsgi_app(environ, start_response)


def no_store(view):
    """Answer the view's responses with ``Cache-Control: no-store``: they carry a token or another secret."""

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        response = make_response(view(*args, **kwargs))
        response.headers["Cache-Control"] = "no-store"
        return response

    return wrapper


def _check_bounds():
    if len(request.path) + len(request.query_string) > MAX_URL_LENGTH:
        raise UriTooLong(f"The URL is longer than {MAX_URL_LENGTH} characters.", details={"limit": MAX_URL_LENGTH})
    # The WSGI environ has the header lines only as decoded pairs; ": " and CRLF are counted back in.
    sizes = [len(name) + len(value) + 4 for name, value in request.headers.items()]
    if max(sizes, default=0) > MAX_HEADER_FIELD_SIZE:
        raise HeaderFieldsTooLarge(f"A request header is longer than {MAX_HEADER_FIELD_SIZE} bytes.",
                                   details={"limit": MAX_HEADER_FIELD_SIZE})
    if sum(sizes) > MAX_HEADER_SIZE:
        raise HeaderFieldsTooLarge(f"The request headers together are longer than {MAX_HEADER_SIZE} bytes.",
                                   details={"limit": MAX_HEADER_SIZE})


def _nosniff(response):
    # A browser must not render an answer as HTML whatever its bytes look like.
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


class NoCookieSession(SessionInterface):
    """No cookie session: the API authenticates each request by its bearer token (SPEC 2) and keeps
    nothing in cookies, so Flask's signed-cookie session is neither opened nor saved (opening it was
    5% of ``GET /auth/me``'s CPU). Flask hands out a ``NullSession`` instead, which refuses writes."""

    def open_session(self, app, request):
        return None

    def save_session(self, app, session, response):
        return None


def register_http(app):
    app.session_interface = NoCookieSession()
    app.response_class = JsonResponse
    app.wsgi_app = BoundedBody(app.wsgi_app, app.config["MAX_CONTENT_LENGTH"])
    app.before_request(_check_bounds)
    app.after_request(_nosniff)
