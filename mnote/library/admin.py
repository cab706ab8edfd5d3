from django.contrib import admin, messages
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from mnote.accounts.roles import is_admin
from mnote.library.forms import IndexedRootForm
from mnote.library.failures import retry_failed
from mnote.library.models import IndexedRoot, Job, Source, WorkerLease
from mnote.library.reasons import plain_reason
from mnote.library.actions import delete_index, prune_registry, pruned_message, reindex_source, remove_root
from mnote.library.sync_report import sync_and_report



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
    form = IndexedRootForm
    list_display = ["name", "path", "recursive", "run_on_change", "enabled", "visible_to_all", "updated_at"]
    list_filter = ["enabled", "run_on_change", "visible_to_all"]
    filter_horizontal = ["visible_to_groups"]
    search_fields = ["name", "path"]
    actions = ["sync_now", "retry_failed_files"]

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        sync_and_report(request, form.instance)

    def get_deleted_objects(self, objs, request):
        deleted, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        # Sources can't be deleted by hand, but they go with their root.
        perms_needed.discard(Source._meta.verbose_name)
        return deleted, model_count, perms_needed, protected

    def delete_model(self, request, obj):
        removal = remove_root(obj)
        self.message_user(request, removal.line(), messages.SUCCESS)

    def delete_queryset(self, request, queryset):
        # Django's "delete selected" comes here too, after its confirmation page.
        for root in queryset:
            self.delete_model(request, root)

    @admin.action(description=gettext_lazy("Sync now"))
    def sync_now(self, request, queryset):
        for root in queryset:
            sync_and_report(request, root)

    @admin.action(description=gettext_lazy("Retry failed files"))
    def retry_failed_files(self, request, queryset):
        _report_retry(self, request, retry_failed(Source.objects.filter(root__in=queryset)))


def _report_retry(model_admin, request, count: int) -> None:
    model_admin.message_user(
        request,
        ngettext(
            "%(n)d failed file will be sent to LightRAG again, a few at a time.",
            "%(n)d failed files will be sent to LightRAG again, a few at a time.",
            count,
        )
        % {"n": count},
        messages.SUCCESS,
    )


@admin.register(Source)
class SourceAdmin(AdminsManageLibrary, admin.ModelAdmin):
    """Registry rows change only through sync and the actions below: a hand
    edit could point a row at a LightRAG document it does not own."""

    list_display = ["relative_path", "root", "status", "reason", "stale", "chunk_count", "indexed_at", "deleted_at"]
    list_filter = ["status", "stale", "root"]
    search_fields = ["relative_path", "lightrag_name", "lightrag_doc_id", "sha256"]
    actions = ["reindex", "retry_failed_files", "delete_lightrag_index", "clear_stale_records"]

    @admin.display(description=gettext_lazy("why not searchable"))
    def reason(self, source):
        return plain_reason(source)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description=gettext_lazy("Reindex"))
    def reindex(self, request, queryset):
        outcomes = {"queued": 0, "missing": 0}
        for source in queryset.select_related("root"):
            try:
                outcomes[reindex_source(source)] += 1
            except OSError as e:
                self.message_user(
                    request,
                    _("%(path)s could not be reindexed: %(error)s") % {"path": source.library_path, "error": e},
                    messages.ERROR,
                )
        if outcomes["queued"]:
            self.message_user(
                request,
                ngettext(
                    "%(n)d file queued for reindexing; its old LightRAG document is being deleted.",
                    "%(n)d files queued for reindexing; their old LightRAG documents are being deleted.",
                    outcomes["queued"],
                )
                % {"n": outcomes["queued"]},
                messages.SUCCESS,
            )
        if outcomes["missing"]:
            self.message_user(
                request,
                ngettext(
                    "%(n)d file is gone from its folder: its LightRAG document is being removed instead.",
                    "%(n)d files are gone from their folders: their LightRAG documents are being removed instead.",
                    outcomes["missing"],
                )
                % {"n": outcomes["missing"]},
                messages.WARNING,
            )

    @admin.action(description=gettext_lazy("Retry failed files"))
    def retry_failed_files(self, request, queryset):
        _report_retry(self, request, retry_failed(queryset))

    @admin.action(description=gettext_lazy("Delete index (LightRAG documents only; files stay)"))
    def delete_lightrag_index(self, request, queryset):
        count = 0
        for source in queryset:
            delete_index(source)
            count += 1
        self.message_user(
            request,
            ngettext(
                "LightRAG's document of %(n)d file is being removed; the file stays where it is.",
                "LightRAG's documents of %(n)d files are being removed; the files stay where they are.",
                count,
            )
            % {"n": count},
            messages.SUCCESS,
        )

    @admin.action(description=gettext_lazy("Clear stale records (whole registry, not just the selection)"))
    def clear_stale_records(self, request, queryset):
        # prune_registry decides what is prunable; the selection only starts the action.
        self.message_user(request, pruned_message(prune_registry()), messages.SUCCESS)


@admin.register(Job)
class JobAdmin(AdminsManageLibrary, admin.ModelAdmin):
    list_display = ["id", "kind", "state", "source", "attempts", "next_attempt_at", "claimed_by", "lease_until", "last_error"]
    list_filter = ["kind", "state"]
    readonly_fields = ["created_at", "updated_at", "finished_at", "claimed_by", "lease_until"]


@admin.register(WorkerLease)
class WorkerLeaseAdmin(AdminsManageLibrary, admin.ModelAdmin):
    """Which worker leads (watcher, full sync, reconcile) and until when; read only."""

    list_display = ["name", "holder", "expires_at", "acquired_at"]
    readonly_fields = ["name", "holder", "expires_at", "acquired_at"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
