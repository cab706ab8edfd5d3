from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("library", "0007_job_claims"),
    ]

    operations = [
        migrations.AddField(
            model_name="source",
            name="mtime_ns",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="source",
            name="inode",
            field=models.BigIntegerField(blank=True, null=True),
        ),
    ]
