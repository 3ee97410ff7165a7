"""The Celery side: the app, its tasks and the work behind them, beat and its schedules."""
