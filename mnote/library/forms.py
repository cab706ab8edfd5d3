"""Input for the registry: the one place an indexed root's fields are
validated, used by the admin and by the ``add_root`` command alike."""

import re
from pathlib import PurePosixPath

from django import forms
from django.conf import settings
from django.contrib.auth.models import Group
from django.utils.translation import gettext_lazy as _

from mnote.library.expansion import PathRefused, resolve_inside
from mnote.library.models import IndexedRoot


MAX_SCOPE_PATHS = 50
# A library path as OpenAPI publishes it and the field checks it: no
# backslash, no ".." segment, something besides slashes and spaces.
LIBRARY_PATH_PATTERN = r"^(?![\s\S]*\\)(?![\s\S]*(^|/)\s*\.\.\s*(/|$))[\s\S]*[^\s/]"


class ScopeField(forms.Field):
    """A search scope: library paths of files or folders (``root/path/in/root``),
    as a JSON list (the API) or, with ``text=True``, one text, comma- or
    line-separated (the pages' input)."""

    def __init__(self, *, text: bool = False, **kwargs):
        self.text = text
        super().__init__(**kwargs)

    def to_python(self, value):
        if value is None or value == "":
            return []
        if self.text and isinstance(value, str):
            if len(value) > 4000:
                raise forms.ValidationError(_("At most %(n)d paths.") % {"n": MAX_SCOPE_PATHS}, code="max_length")
            value = [p for p in value.replace("\n", ",").split(",") if p.strip().strip("/")]
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise forms.ValidationError(_("Must be a list of library paths (strings)."), code="invalid")
        if len(value) > MAX_SCOPE_PATHS:
            raise forms.ValidationError(_("At most %(n)d paths.") % {"n": MAX_SCOPE_PATHS}, code="max_length")
        paths = []
        for raw in value:
            if ".." in [part.strip() for part in raw.split("/")]:
                raise forms.ValidationError(_("A scope path cannot contain “..”."), code="invalid")
            if not re.search(LIBRARY_PATH_PATTERN, raw):
                raise forms.ValidationError(
                    _("“%(path)s” is not a library path such as “papers/2024”.") % {"path": raw}, code="invalid"
                )
            paths.append(str(PurePosixPath(raw.strip().strip("/"))))
        return list(dict.fromkeys(paths))


class GlobLinesField(forms.CharField):
    """Exclude patterns as people write them, one glob per line; stored as a list."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 60, "spellcheck": "false"})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, (list, tuple)):
            return "\n".join(value)
        return value

    def to_python(self, value):
        if isinstance(value, (list, tuple)):
            lines = value
        else:
            lines = (super().to_python(value) or "").splitlines()
        # Blank lines and repeats are noise, not patterns.
        return list(dict.fromkeys(line.strip() for line in lines if line.strip()))

    def validate(self, value):
        super().validate(value)
        for pattern in value:
            if pattern.startswith("/"):
                raise forms.ValidationError(
                    _(
                        "“%(pattern)s” starts with “/”; patterns match paths inside the root, "
                        "such as **/drafts/**."
                    ),
                    code="absolute_pattern",
                    params={"pattern": pattern},
                )


class IndexedRootForm(forms.ModelForm):
    include_patterns = GlobLinesField(
        label=_("include patterns"),
        help_text=_("Optional. One glob per line; when given, only matching files are in the root, e.g. **/*.docx"),
    )
    exclude_patterns = GlobLinesField(
        label=_("exclude patterns"),
        help_text=_("One glob per line, matched against paths inside the root, e.g. **/draft-private/**"),
    )

    class Meta:
        model = IndexedRoot
        fields = [
            "name",
            "path",
            "recursive",
            "include_patterns",
            "exclude_patterns",
            "run_on_change",
            "enabled",
            "visible_to_all",
            "visible_to_groups",
            "uploads_open",
        ]
        error_messages = {
            "name": {
                "required": _("Give the root a name people will recognise."),
                "unique": _("Another root already has this name."),
            },
            "path": {
                "required": _("Give a folder or file inside the library base directory."),
                "unique": _("This folder is already a root."),
            },
        }

    def clean_path(self):
        given = self.cleaned_data["path"]
        base = settings.MNOTE_LIBRARY_BASE_DIR
        try:
            resolved = resolve_inside(base, given)
        except PathRefused as e:
            raise forms.ValidationError(str(e), code="refused") from e
        # Stored resolved, so the same folder reached by two spellings (or an
        # inner symlink) is recognised as one root.
        return resolved.relative_to(base.resolve()).as_posix()

    def clean(self):
        cleaned = super().clean()
        path = cleaned.get("path")
        if cleaned.get("uploads_open") and path and not (settings.MNOTE_LIBRARY_BASE_DIR / path).is_dir():
            self.add_error("uploads_open", _("Only a folder can take uploads; this root is a single file."))
        return cleaned


class GroupForm(forms.ModelForm):
    """A group and the roots it sees: the roots' own ``visible_to_groups``,
    edited from the group's side."""

    roots = forms.ModelMultipleChoiceField(
        queryset=IndexedRoot.objects.order_by("name"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=_("roots this group sees"),
        help_text=_("Members of the group see these roots besides the roots open to all members."),
    )

    class Meta:
        model = Group
        fields = ["name"]
        error_messages = {"name": {"unique": _("Another group already has this name.")}}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        roots = self.fields["roots"]
        roots.label_from_instance = _root_choice_label
        if self.instance.pk:
            roots.initial = list(self.instance.visible_roots.values_list("pk", flat=True))

    def save(self, commit=True):
        group = super().save(commit=True)
        group.visible_roots.set(self.cleaned_data["roots"])
        return group


def _root_choice_label(root: IndexedRoot) -> str:
    if root.visible_to_all:
        return _("%(root)s (open to all members anyway)") % {"root": root.name}
    return root.name
