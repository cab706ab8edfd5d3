from django.contrib import admin

from mnote.accounts.roles import is_admin
from mnote.library.models import IndexedRoot, Job, Source


class AdminsManageLibrary:
    """The admin role is Django staff: no per-model permissions to hand out."""

    def has_module_permission(self, request):
        return is_admin(request.user)

    def has_view_permission(self, request, obj=None):
        return is_admin(request.user)

    def has_add_permission(self, request):
        return is_admin(request.user)

    def has_change_permission(self, request, obj=None):
        return is_admin(request.user)

    def has_delete_permission(self, request, obj=None):
        return is_admin(request.user)


@admin.register(IndexedRoot)
class IndexedRootAdmin(AdminsManageLibrary, admin.ModelAdmin):
    list_display = ["name", "path", "recursive", "run_on_change", "enabled", "visible_to_all", "updated_at"]
    list_filter = ["enabled", "run_on_change", "visible_to_all"]
    filter_horizontal = ["visible_to_groups"]
    search_fields = ["name", "path"]


@admin.register(Source)
class SourceAdmin(AdminsManageLibrary, admin.ModelAdmin):
    list_display = ["relative_path", "root", "status", "stale", "chunk_count", "indexed_at", "deleted_at"]
    list_filter = ["status", "stale", "root"]
    search_fields = ["relative_path", "lightrag_name", "lightrag_doc_id", "sha256"]
    readonly_fields = ["created_at", "updated_at"]


@admin.register(Job)
class JobAdmin(AdminsManageLibrary, admin.ModelAdmin):
    list_display = ["id", "kind", "state", "source", "attempts", "next_attempt_at", "last_error"]
    list_filter = ["kind", "state"]
    readonly_fields = ["created_at", "updated_at", "finished_at"]
