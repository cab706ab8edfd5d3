from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _


class ConversationQuerySet(models.QuerySet):
    def of(self, user):
        """A user's own conversations: nobody else's are ever listed or opened."""
        return self.filter(user=user) if user.is_authenticated else self.none()


class Conversation(models.Model):
    """Questions and answers asked one after the other; each follow-up is
    sent to LightRAG with the earlier turns."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    title = models.CharField(_("title"), max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ConversationQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self):
        return self.title

    def get_absolute_url(self):
        return reverse("conversation", args=[self.pk])

    # Enough earlier turns to follow a thread without crowding out the context.
    HISTORY_TURNS = 4

    def history(self) -> list[dict[str, str]]:
        """Earlier turns as LightRAG's ``conversation_history``."""
        messages = []
        for turn in list(self.turns.order_by("-created_at")[: self.HISTORY_TURNS])[::-1]:
            messages.append({"role": "user", "content": turn.question})
            messages.append({"role": "assistant", "content": turn.answer_text})
        return messages


class Turn(models.Model):
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    question = models.TextField()
    kind = models.CharField(max_length=20)
    sentences = models.JSONField(default=list, help_text=_("[{text, citationIds, spaceBefore}]"))
    citations = models.JSONField(default=list, help_text=_("The cards shown with the answer, as the JSON API gives them."))
    notes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    @property
    def answer_text(self) -> str:
        return "".join(s.get("spaceBefore", "") + s.get("text", "") for s in self.sentences)
