"""The library's one vocabulary of why a file is not searchable, for templates:
``{{ source|plain_reason }}`` and, for admins, ``{{ source|readable_error }}``.
Filters rather than model properties: the vocabulary looks inside a file
(an encrypted Office file), which the model stage below it cannot open."""

from django import template

from mnote.library import reasons

register = template.Library()


@register.filter
def plain_reason(source) -> str:
    return reasons.plain_reason(source)


@register.filter
def readable_error(source) -> str:
    return reasons.readable_message(source)
