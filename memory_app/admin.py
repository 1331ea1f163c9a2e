from __future__ import annotations

from django.contrib import admin

from memory_app.models import MemoryNote, MemoryRevision, MemorySpace

admin.site.register(MemorySpace)
admin.site.register(MemoryNote)
admin.site.register(MemoryRevision)
