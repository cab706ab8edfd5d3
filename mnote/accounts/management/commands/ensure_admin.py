import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from mnote.private_files import write_private_file


class Command(BaseCommand):
    help = "Create a first admin when the site has none, and say how to log in."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username, **options):
        User = get_user_model()
        if User.objects.filter(is_staff=True, is_active=True).exists():
            self.stdout.write("An admin already exists; log in with your account.")
            return
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
        # Kept beside the database so the password is not lost with the scrollback.
        note = settings.DATA_DIR / "first-admin.txt"
        write_private_file(note, f"username: {username}\npassword: {password}\n")
        self.stdout.write(
            self.style.SUCCESS(f"Created the first admin. Log in as “{username}” with password “{password}”")
            + f"\n(also saved in {note}; change it under Administration → Users)."
        )
