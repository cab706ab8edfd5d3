import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """The model the search app made (its table kept as it is)."""

    initial = True

    dependencies = [
        ("library", "0002_source_generation"),
        ("search", "0003_workspacetext_to_workspace"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="WorkspaceText",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("sha256", models.CharField(max_length=64)),
                        ("body", models.TextField()),
                        (
                            "source",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE, related_name="workspace_text", to="library.source"
                            ),
                        ),
                    ],
                    options={"db_table": "search_workspacetext"},
                ),
            ]
        ),
    ]
