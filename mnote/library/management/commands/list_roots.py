from django.core.management.base import BaseCommand
from django.db.models import Count

from mnote.library.models import IndexedRoot, Source


class Command(BaseCommand):
    help = "List the library's roots, one line each, with their sources per status."

    def handle(self, *args, **options):
        roots = IndexedRoot.objects.prefetch_related("visible_to_groups")
        if not roots:
            self.stdout.write("No roots yet; add one with add_root.")
            return
        labels = dict(Source.Status.choices)
        for root in roots:
            counts = root.sources.values_list("status").annotate(n=Count("id")).order_by("status")
            total = sum(n for _, n in counts)
            per_status = ", ".join(f"{n} {labels[status]}" for status, n in counts)
            flags = [
                "enabled" if root.enabled else "disabled",
                "recursive" if root.recursive else "top level only",
                "run on change" if root.run_on_change else "manual reindex on change",
                "visible to all"
                if root.visible_to_all
                else "visible to " + (", ".join(g.name for g in root.visible_to_groups.all()) or "admins only"),
            ]
            if root.exclude_patterns:
                flags.append("excludes " + " ".join(root.exclude_patterns))
            sources = f"{total} sources" + (f" ({per_status})" if per_status else "")
            self.stdout.write(f"#{root.pk} {root.name}: {root.path} — {'; '.join(flags)}; {sources}")
