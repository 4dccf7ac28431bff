"""django-idempotency-key's documented setup (README: the middleware in
MIDDLEWARE, and the cache storage over a database-backed Django cache), in one
file, plus two endpoints that charge through idemsim's payment provider.
idemsim's validation target: nothing here corrects or works around the
middleware.

    PORT=7501 PROVIDER_URL=http://127.0.0.1:7410 .venv/bin/python app.py
"""
import json
import os
import sys
import urllib.request

from django.conf import settings

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = int(os.environ.get("PORT", "7501"))
PROVIDER = os.environ.get("PROVIDER_URL", "http://127.0.0.1:7410")
DATABASE = os.environ.get("DATABASE", os.path.join(HERE, "idemsim-validation.sqlite3"))

settings.configure(
    DEBUG=False,
    SECRET_KEY="idemsim-validation-only",
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=["idempotency_key"],
    MIDDLEWARE=["idempotency_key.middleware.IdempotencyKeyMiddleware"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DATABASE}},
    CACHES={
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "idempotency_key_cache",
        }
    },
    IDEMPOTENCY_KEY={"STORAGE": {"CLASS": "idempotency_key.storage.CacheKeyStorage"}},
)

import django  # noqa: E402

django.setup()

from django.http import JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402

NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def charge(request):
    try:
        body = json.loads(request.body)
    except ValueError:
        return JsonResponse({"error": "invalid JSON"}, status=400)
    amount, ref = body.get("amount"), body.get("ref")
    if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
        return JsonResponse({"error": "amount must be a positive integer"}, status=400)
    call = urllib.request.Request(
        PROVIDER + "/charges",
        data=json.dumps({"amount": amount, "ref": ref}).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with NO_PROXY.open(call, timeout=10) as answer:
            charged = json.load(answer)
    except Exception as e:  # the provider failed or timed out
        return JsonResponse({"error": "provider: %s" % e}, status=502)
    return JsonResponse({"charge": charged["id"], "amount": amount, "ref": ref, "path": request.path}, status=201)


urlpatterns = [path("charges", charge), path("payments", charge)]

if __name__ == "__main__":
    from django.core.management import call_command, execute_from_command_line

    if os.path.exists(DATABASE):
        os.remove(DATABASE)  # each run starts with an empty cache
    call_command("createcachetable", verbosity=0)
    execute_from_command_line([sys.argv[0], "runserver", "--noreload", "127.0.0.1:%d" % PORT])
