"""The owner watchdog: the actor system stops by itself when the daemon that started it is gone.

:mod:`actors.watchdog.liveness` holds the pure decision (:func:`~actors.watchdog.liveness.daemon_alive`)
and the ``/proc`` readers; :mod:`actors.watchdog.actor` the thin actor that polls it.
"""
