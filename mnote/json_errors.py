"""The app's one JSON error shape, ``{"error": {"code", "message"}}``, for the
JSON API and the preview's JSON endpoints alike."""

from django.http import JsonResponse


def error_response(status: int, code: str, message: str, *, headers: dict | None = None, **extra) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, **extra}}, status=status, headers=headers)
