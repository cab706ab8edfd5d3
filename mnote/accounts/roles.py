"""Two roles: members (any active user: search, ask, open citations) and
admins (Django staff: also manage roots and sources)."""


def is_admin(user) -> bool:
    return user.is_active and user.is_staff
