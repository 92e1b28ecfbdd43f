"""The Django admin over the raw study data; the researcher dashboard comes separately.

Every add and change goes through the services that own the rows (HackSoft's
``save_model → user_create``): a form's ``clean`` asks the services' checks, so a refusal
shows as the service's message on the form and nothing changes; ``save_model`` then calls the
services themselves. Rows only services write are view-only here.
"""

from annotation.admin import campaigns, records
from annotation.admin.base import ReadOnlyAdmin, ServiceAdmin, ServiceForm

__all__ = ["ReadOnlyAdmin", "ServiceAdmin", "ServiceForm", "campaigns", "records"]
