from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.contrib.auth.models import Group
from django.utils.translation import gettext_lazy as _

from mnote.accounts.models import Invitation


class LoginForm(AuthenticationForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["username"].widget.attrs.update({"autocomplete": "username", "autofocus": True})
        self.fields["password"].widget.attrs.update({"autocomplete": "current-password"})


class InvitationForm(forms.ModelForm):
    class Meta:
        model = Invitation
        fields = ["note", "groups", "make_admin"]
        widgets = {"groups": forms.CheckboxSelectMultiple}


class JoinForm(UserCreationForm):
    """What an invited person fills in: a user name, their name, a password
    (Django's password rules and its checks for a taken user name)."""

    class Meta(UserCreationForm.Meta):
        model = get_user_model()
        fields = ("username", "first_name")
        labels = {"first_name": _("Your name")}
        help_texts = {"first_name": _("As your team should see it.")}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["username"].widget.attrs.update({"autocomplete": "username", "autofocus": True})
        self.fields["first_name"].widget.attrs.update({"autocomplete": "name"})


class UserEditForm(forms.ModelForm):
    """An admin's view of an account: name, groups, admin, active. An admin
    cannot take away their own admin role or account here (they would lock
    themselves out mid-edit)."""

    class Meta:
        model = get_user_model()
        fields = ["first_name", "last_name", "groups", "is_staff", "is_active"]
        widgets = {"groups": forms.CheckboxSelectMultiple}
        labels = {"is_staff": _("admin"), "is_active": _("active")}
        help_texts = {
            "is_staff": _("May manage roots, files and people."),
            "is_active": _("A deactivated account cannot log in; its sessions and API tokens stop working."),
            "groups": _("The account sees the roots shared with these groups, besides the roots open to all."),
        }

    def __init__(self, *args, editor, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["groups"].queryset = Group.objects.order_by("name")
        if self.instance.pk == editor.pk:
            for name in ("is_staff", "is_active"):
                self.fields[name].disabled = True
                self.fields[name].help_text = _("You cannot change this for your own account.")
