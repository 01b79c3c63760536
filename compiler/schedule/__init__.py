"""Schedules and their lowering to loop IR."""
from .schedule import Schedule, Stage, ScheduleError, create_schedule, vthread
from .lower import lower_schedule
