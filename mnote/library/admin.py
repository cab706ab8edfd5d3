from django.contrib import admin

from mnote.library.models import IndexedRoot, Job, Source


@admin.register(IndexedRoot)
class IndexedRootAdmin(admin.ModelAdmin):
    list_display = ["name", "path", "recursive", "run_on_change", "enabled", "visible_to_all", "updated_at"]
    list_filter = ["enabled", "run_on_change", "visible_to_all"]
    filter_horizontal = ["visible_to_groups"]
    search_fields = ["name", "path"]


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = ["relative_path", "root", "status", "stale", "chunk_count", "indexed_at", "deleted_at"]
    list_filter = ["status", "stale", "root"]
    search_fields = ["relative_path", "lightrag_name", "lightrag_doc_id", "sha256"]
    readonly_fields = ["created_at", "updated_at"]


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "state", "source", "attempts", "next_attempt_at", "last_error"]
    list_filter = ["kind", "state"]
    readonly_fields = ["created_at", "updated_at", "finished_at"]
