/* SPDX-License-Identifier: MIT */
/*
 * Per-application rules: what placed does with the group of a task that
 * matches (leave it alone, treat it as latency-critical, never pack it, or
 * pack it with a partner's group). Rules live in rules.d/ *.conf next to the
 * main configuration, one INI section per rule:
 *
 *     [NAME]                       ; the rule's name, unique over all files
 *     comm = GLOB                  ; fnmatch() on the task's comm
 *     exe = GLOB                   ; fnmatch() on its executable's path
 *     cgroup = /PATH               ; its cgroup lies at or under /PATH
 *     unit = GLOB                  ; fnmatch() on its systemd unit
 *     action = ignore | latency-critical | never-pack | pack-with
 *     partner = NAME               ; pack-with only: the partner rule
 *
 * At least one match key; every key given must match. The old [exclude]
 * comm= and cgroup= keys become ignore rules named "exclude.comm[N]" and
 * "exclude.cgroup[N]", ahead of the rules.d files.
 *
 * Matching (rule_match(), rules_match()) is pure: it sees a RuleSubject of
 * strings, whoever read them. A task takes the first rule that matches, in
 * order (exclusions, then files in name order, sections in file order); a
 * group takes, of its members' rules, the strongest action (ignore, then
 * never-pack, then latency-critical, then pack-with), the first such rule
 * in order naming it (rules_group_decide()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RULE_NAME_MAX   64
#define RULES_MAX       1024
#define RULE_ORIGIN_MAX 300

typedef enum RuleAction {
        RULE_ACTION_NONE, /* no rule: the profile decides */
        RULE_ACTION_IGNORE,
        RULE_ACTION_LATENCY_CRITICAL,
        RULE_ACTION_NEVER_PACK,
        RULE_ACTION_PACK_WITH,
        _RULE_ACTION_MAX,
} RuleAction;

typedef struct Rule {
        char name[RULE_NAME_MAX];
        /* Match keys; NULL = not a condition. Owned. */
        char *comm;   /* fnmatch() glob */
        char *exe;    /* fnmatch() glob on the path (FNM_PATHNAME not set: '*' crosses '/') */
        char *cgroup; /* path prefix: "/a/b" covers "/a/b" and "/a/b/c", not "/a/bc" */
        char *unit;   /* fnmatch() glob on its unit (task_facts_unit_from_cgroup()) */
        RuleAction action;
        char partner[RULE_NAME_MAX];  /* pack-with: the partner rule's name */
        char origin[RULE_ORIGIN_MAX]; /* "FILE:LINE" of its section, for messages */
} Rule;

typedef struct RuleSet {
        Rule *rules; /* owned, in precedence order */
        unsigned n_rules;
} RuleSet;

/* What a rule matches against: facts about one task, NULL = unknown (a key
 * on an unknown fact does not match). */
typedef struct RuleSubject {
        const char *comm;
        const char *exe;
        const char *cgroup;
        const char *unit;
} RuleSubject;

/* A group's rule decision: what the policy honours (PolicyInput.rules). */
typedef struct GroupRule {
        RuleAction action;
        char rule[RULE_NAME_MAX];    /* the rule that decided; "" = none */
        char partner[RULE_NAME_MAX]; /* pack-with: the partner rule */
        uint64_t partner_group;      /* pack-with: the group packed with ... */
        bool has_partner_group;      /* ... when one matched the partner rule */
} GroupRule;

/* Return: "ignore", "latency-critical", "never-pack", "pack-with", "none"; NULL out of range. */
const char *rule_action_to_string(RuleAction a);
/* Return: the action, or -EINVAL. */
int rule_action_from_string(const char *s);

/* rule_cgroup_under() - "/a/b" covers "/a/b" and "/a/b/c", not "/a/bc"; "/" covers all. */
bool rule_cgroup_under(const char *cgroup, const char *prefix);

/* rule_match() - every key of r matches s (a key on a NULL fact does not). */
bool rule_match(const Rule *r, const RuleSubject *s);

/* rules_match() - the first rule of set that matches s, or NULL. */
const Rule *rules_match(const RuleSet *set, const RuleSubject *s);

/*
 * rules_group_decide() - a group's decision from the rule each member
 * matched (matched[i] NULL = none; set gives the order): the strongest
 * action, then the earliest rule in set. partner_group is left unset (see
 * rules_link_partners()).
 */
void rules_group_decide(const RuleSet *set, const Rule *const *matched, unsigned n, GroupRule *ret);

/*
 * rules_link_partners() - for each pack-with decision, the group whose own
 * decision came from the partner rule (the lowest id of them), when that
 * decision is latency-critical or pack-with (an ignored or never-packed
 * group is not packed with anything). ids and v are parallel.
 */
void rules_link_partners(const uint64_t *ids, GroupRule *v, unsigned n);

/* Receives "FILE:LINE: message"; error false = a warning. */
typedef void (*RulesDiag)(void *userdata, bool error, const char *message);

/*
 * rules_load_dir() - appends the rules of DIR/ *.conf (regular files, name
 * order) to set. A missing directory adds nothing. Each file is read with
 * inih; errors are "FILE:LINE: message" through diag. A symbolic link is
 * followed only to a regular file inside DIR; one that leads outside is an
 * error ("FILE: a symbolic link to TARGET (a regular file) outside DIR:
 * refused ..."; the target is never read), but a link to /dev/null, which
 * masks a file of its name. Any other entry that is not a regular file
 * (a FIFO, a device, a dangling link) is skipped with a warning
 * ("FILE: not a regular file (a FIFO), skipped").
 * Return: 0; -EINVAL on a syntax error or invalid rule; -EPERM for a link
 * that leads outside DIR; -ENOMEM; other negative errno on I/O errors. On
 * failure set may hold some of the rules (the caller discards it).
 */
int rules_load_dir(const char *dir, RuleSet *set, RulesDiag diag, void *userdata);

/*
 * rules_add_ignore() - appends an ignore rule named "NAME_PREFIX[N]"
 * (N = index + 1) matching comm (a glob) or cgroup (a prefix): the old
 * [exclude] keys. Return: 0, -ENOMEM, -E2BIG past RULES_MAX.
 */
int rules_add_ignore(RuleSet *set, const char *name_prefix, unsigned index, const char *comm,
                     const char *cgroup);

/*
 * rules_check() - every pack-with names a partner rule that exists, is not
 * itself, and is neither ignore nor never-pack; names are unique.
 * Return: 0 or -EINVAL (after a diag naming the rule's FILE:LINE).
 */
int rules_check(const RuleSet *set, RulesDiag diag, void *userdata);

/* Frees what set owns; leaves it empty. */
void rules_done(RuleSet *set);
