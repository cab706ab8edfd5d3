"""The upload page of a root opened for uploads: drop or pick files and
folders, each sent on its own (so the browser shows its progress), then
queued for indexing by the root's sync."""

from django.http import JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from mnote.library.models import IndexedRoot
from mnote.library.progress import file_stage, STAGES
from mnote.library.uploads import UploadRefused, max_upload_bytes, may_upload, store_upload
from mnote.pages.library import MAX_ID, _progress_context

# Multipart framing and the path field, on top of the file itself.
_FORM_OVERHEAD = 64 * 1024


def _refused(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"ok": False, "error": message}, status=status)


@require_http_methods(["GET", "POST"])
def upload(request, root_id):
    root = get_object_or_404(IndexedRoot.objects.visible_to(request.user), pk=min(root_id, MAX_ID))
    if not may_upload(request.user, root):
        if request.method == "POST":
            return _refused(_("This root does not take uploads."), 403)
        return render(request, "library/upload_closed.html", {"root": root}, status=403)
    if request.method == "GET":
        return render(
            request,
            "library/upload.html",
            {"root": root, "max_bytes": max_upload_bytes(), **_progress_context(request.user, [root.pk])},
        )
    # Refused before Django reads the body: a file over the limit is never stored, not even in /tmp.
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > max_upload_bytes() + _FORM_OVERHEAD:
        return _refused(_("This file is larger than the most one upload may be."), 413)
    upload_file = request.FILES.get("file")
    if upload_file is None:
        return _refused(_("No file was sent."))
    try:
        stored = store_upload(root, request.POST.get("path") or upload_file.name, upload_file)
    except UploadRefused as e:
        return _refused(str(e))
    stage = file_stage(stored.source) if stored.source else ""
    return JsonResponse(
        {
            "ok": True,
            "path": stored.relative_path,
            "renamed": stored.renamed,
            "stage": stage,
            "stageLabel": str(STAGES.get(stage, "")),
            "message": (
                _("Saved as “%(path)s”: the name was taken.") % {"path": stored.relative_path}
                if stored.renamed
                else _("Saved.")
            ),
        },
        status=201,
    )
