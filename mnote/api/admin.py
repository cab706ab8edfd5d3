from django.contrib import admin

from mnote.api.models import ApiToken
from mnote.library.admin import AdminsManageLibrary


@admin.register(ApiToken)
class ApiTokenAdmin(AdminsManageLibrary, admin.ModelAdmin):
    """Tokens are made by ``manage.py create_api_token`` (the key is shown
    once there); here admins see and revoke them."""

    list_display = ["name", "user", "prefix", "created_at", "last_used_at"]
    list_filter = ["user"]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = ["user", "prefix", "key_hash", "created_at", "last_used_at"]
    fields = ["name", "user", "prefix", "key_hash", "created_at", "last_used_at"]

    def has_add_permission(self, request):
        return False
