/* sdnotify.h - systemd's readiness protocol without libsystemd: a
 * datagram to $NOTIFY_SOCKET (sd_notify(3)). headroomd says READY=1 once
 * its API listens and STOPPING=1 when a signal stops it; under a unit with
 * Type=notify (packaging/headroomd.service) systemd waits for the first
 * and knows of the second. Without $NOTIFY_SOCKET nothing is sent.
 */
#ifndef HR_SDNOTIFY_H
#define HR_SDNOTIFY_H

/* Sends state ("READY=1", "STOPPING=1", "STATUS=..."); 1 sent, 0 no
 * socket to send to, -1 on error. */
int sd_notify_send(const char *state);

#endif
