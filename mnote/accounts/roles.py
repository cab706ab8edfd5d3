"""Two roles: members (any active user: search, ask, open citations) and
admins (Django staff: also manage roots and sources)."""

from django.contrib.auth.decorators import user_passes_test


def is_admin(user) -> bool:
    return user.is_active and user.is_staff


admin_required = user_passes_test(is_admin)
