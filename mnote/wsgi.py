import os

from django.core.wsgi import get_wsgi_application

from mnote.data_dir import prepare_data_dir

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mnote.settings")
# A web process started on its own (gunicorn mnote.wsgi) makes what it needs
# before the settings load, as manage.py does.
prepare_data_dir()
application = get_wsgi_application()
