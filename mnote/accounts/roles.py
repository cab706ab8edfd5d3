"""Two roles: members (any active user: search, ask, open citations) and
admins (Django staff: also manage roots, sources and people). Superusers
also have Django's own admin site."""

from functools import wraps

from django.shortcuts import render


def is_admin(user) -> bool:
    return user.is_active and user.is_staff


def admin_only(view):
    """Admin pages answer a member with a clear 403 page, not a login loop."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not is_admin(request.user):
            return render(request, "library/forbidden.html", status=403)
        return view(request, *args, **kwargs)

    return wrapped
