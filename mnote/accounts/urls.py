from django.contrib.auth import views as auth_views
from django.urls import path

from mnote.pages.people_forms import LoginForm

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="accounts/login.html", authentication_form=LoginForm),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
