from __future__ import annotations

from django.contrib import admin

from skills_app.models import Bundle, Skill, SlashCommand, SubagentType

admin.site.register(Skill)
admin.site.register(Bundle)
admin.site.register(SlashCommand)
admin.site.register(SubagentType)
