from django.db import migrations


class Migration(migrations.Migration):
    """The workspace index's model moves to the workspace app; its table stays."""

    dependencies = [
        ("search", "0002_conversations"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="WorkspaceText")]),
    ]
