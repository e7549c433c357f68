/* resummary.h - `headroomd summarize RUN_ID`: a stored run's summary
 * computed again from its records and printed (see resummary.c). */
#ifndef HR_RESUMMARY_H
#define HR_RESUMMARY_H

/* argv after "summarize"; returns the exit status. */
int resummary_command(int argc, char **argv);

#endif
