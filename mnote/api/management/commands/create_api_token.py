from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from mnote.api.models import ApiToken


class Command(BaseCommand):
    help = "Create an API token for a user and print it once (only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="What the token is for, e.g. the agent using it.")

    def handle(self, *args, username, name, **options):
        User = get_user_model()
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: username})
        except User.DoesNotExist:
            raise CommandError(f"No user named “{username}”.") from None
        if not user.is_active:
            raise CommandError(f"“{username}” is inactive; an inactive user's token would be refused.")
        token, key = ApiToken.objects.create_token(user, name)
        self.stdout.write(key)
        self.stderr.write(
            f"Token {token.prefix}… for {username} created. It is shown only now; "
            "send it as “Authorization: Bearer <token>”."
        )
