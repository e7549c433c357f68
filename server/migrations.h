/* migrations.h - the schema migrations compiled in from schema/NNN_name.sql. */
#ifndef HR_MIGRATIONS_H
#define HR_MIGRATIONS_H

struct migration {
	int version;
	const char *name;
	const char *sql;
};

extern const struct migration migrations[];
extern const int migrations_count;

#endif
