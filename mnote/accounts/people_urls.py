from django.urls import path

from mnote.pages import people as views

app_name = "people"

urlpatterns = [
    path("", views.people, name="people"),
    path("invite/", views.invite, name="invite"),
    path("invitations/<int:invitation_id>/", views.invitation, name="invitation"),
    path("invitations/<int:invitation_id>/revoke/", views.invitation_revoke, name="invitation_revoke"),
    path("join/<str:token>/", views.join, name="join"),
    path("users/<int:user_id>/", views.user_edit, name="user_edit"),
    path("users/<int:user_id>/reset-link/", views.user_reset_link, name="user_reset_link"),
    path("users/<int:user_id>/active/", views.user_active, name="user_active"),
    path("reset/<uidb64>/<token>/", views.ResetView.as_view(), name="reset"),
]
