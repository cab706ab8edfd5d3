"""MNote Library settings: every deployment-specific value comes from the
environment through the typed helpers in ``mnote.env`` (see README,
"Configuration")."""

import os
import secrets

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP
from django.utils.translation import gettext_lazy as _

from mnote.data_dir import BASE_DIR, data_dir, sqlite_path, stored_secret_key
from mnote.env import env_base_url, env_bool, env_int, env_list, env_path, env_str, postgres_options
from mnote.lightrag.config import ImproperlyConfiguredLightRAG, load_config

# Importing the settings writes nothing: manage.py and mnote.wsgi create the
# data folder, the key file and the SQLite file at start (mnote/data_dir.py).
DATA_DIR = data_dir()

DEBUG = env_bool("MNOTE_DEBUG", False)

# A process that did not start through manage.py or mnote.wsgi (a test
# session, a script calling django.setup()) and finds no key yet signs with
# one of its own, for its lifetime only.
SECRET_KEY = env_str("MNOTE_SECRET_KEY") or stored_secret_key(DATA_DIR) or secrets.token_urlsafe(50)
ALLOWED_HOSTS = env_list("MNOTE_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("MNOTE_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "mnote.accounts",
    "mnote.library",
    "mnote.citations",
    "mnote.preview",
    "mnote.workspace",
    "mnote.search",
    "mnote.api",
    "mnote.stack",
    "mnote.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    # Recent questions in a signed cookie, so a search writes no session row.
    "mnote.search.recent.RecentQuestionsMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "mnote.urls"
WSGI_APPLICATION = "mnote.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_database_url = env_str("DATABASE_URL")
if _database_url:
    try:
        DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=60)}
    except ValueError as e:
        raise ImproperlyConfigured(f"DATABASE_URL is not usable: {e}") from e
    if DATABASES["default"]["ENGINE"].endswith("postgresql"):
        DATABASES["default"].setdefault("OPTIONS", {}).update(postgres_options())
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": sqlite_path(DATA_DIR),
            # Kept open between requests like PostgreSQL's (opening one costs
            # about a millisecond per request).
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
            # The sync worker and the web app write at the same time.
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The preview's render budget and its memory of refused renders live in the
# cache. Several web processes (the scaled run, several machines) must share
# one: MNOTE_CACHE=database keeps it in the database (`manage.py
# createcachetable` makes the table). Unset: each process has its own.
_cache = env_str("MNOTE_CACHE", "local")
if _cache == "database":
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "mnote_cache"}}
elif _cache != "local":
    raise ImproperlyConfigured(f"MNOTE_CACHE={_cache!r}: use 'local' (one process) or 'database' (several).")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("MNOTE_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the finders so a fresh checkout needs no collectstatic.
WHITENOISE_USE_FINDERS = True

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "frame-ancestors": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
}
X_FRAME_OPTIONS = "SAMEORIGIN"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads it to send X-CSRFToken
SECURE_CONTENT_TYPE_NOSNIFF = True

# --- the library and its LightRAG server ---------------------------------
MNOTE_LIBRARY_BASE_DIR = env_path("MNOTE_LIBRARY_BASE_DIR", DATA_DIR / "library")
MNOTE_BATCH_LIMIT = env_int("MNOTE_BATCH_LIMIT", 200, minimum=1)
# Most queued files the worker links into LightRAG's inputs for one scan (LightRAG
# takes a scan's files as one batch); the rest go with the next scan.
MNOTE_SCAN_BATCH = env_int("MNOTE_SCAN_BATCH", 200, minimum=1)
# Files larger than this (KB) are scanned in batches of their own, after every
# smaller queued file: one 600-chunk document does not hold the small ones.
MNOTE_SCAN_ALONE_KB = env_int("MNOTE_SCAN_ALONE_KB", 256, minimum=1)
# Expensive preview renders (not already cached) one user may start per minute; 0: no limit.
MNOTE_PREVIEW_RENDERS_PER_MINUTE = env_int("MNOTE_PREVIEW_RENDERS_PER_MINUTE", 30, minimum=0)
# Files with more text than this (estimated, MB) are held back at sync until an admin allows them; 0: no limit.
MNOTE_MAX_TEXT_MB = env_int("MNOTE_MAX_TEXT_MB", 20, minimum=0)
# Largest file one upload into a root may be, in MB.
MNOTE_UPLOAD_MAX_MB = env_int("MNOTE_UPLOAD_MAX_MB", 200, minimum=1)
# Days an invitation link works (once); a password reset link works PASSWORD_RESET_TIMEOUT (Django's, 3 days).
MNOTE_INVITATION_DAYS = env_int("MNOTE_INVITATION_DAYS", 7, minimum=1)
# The address agents' links start with (the JSON API, MCP); unset: the request's own.
MNOTE_PUBLIC_URL = env_base_url("MNOTE_PUBLIC_URL")

_lightrag_environ = dict(os.environ)
# The embedded stack writes LightRAG's own .env here; read key and folders from it.
_embedded_env_file = DATA_DIR / "lightrag" / ".env"
if not _lightrag_environ.get("MNOTE_LIGHTRAG_ENV_FILE") and _embedded_env_file.exists():
    _lightrag_environ["MNOTE_LIGHTRAG_ENV_FILE"] = str(_embedded_env_file)
try:
    MNOTE_LIGHTRAG = load_config(
        _lightrag_environ,
        default_url="http://127.0.0.1:9621",
        default_input_dir=DATA_DIR / "lightrag" / "inputs",
        default_working_dir=DATA_DIR / "lightrag" / "rag_storage",
    )
except ImproperlyConfiguredLightRAG as e:
    raise ImproperlyConfigured(str(e)) from e

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("MNOTE_LOG_LEVEL", "INFO").upper()},
    # One line per request to LightRAG is noise at INFO.
    "loggers": {"httpx": {"level": "WARNING"}, "watchfiles": {"level": "WARNING"}},
}
