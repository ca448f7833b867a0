/* SPDX-License-Identifier: MIT */
/*
 * Tests for lib/rules.c's pure part: matching a subject (comm, exe, cgroup,
 * unit) against rules, a group's decision from
 * its members' rules (precedence), and pack-with links between groups.
 * Reading rules.d is tested through config_load() in test-config.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "macro.h"
#include "rules.h"

static Rule mk(const char *name, RuleAction a, const char *comm, const char *exe,
               const char *cgroup, const char *unit) {
        Rule r = { .action = a,
                   .comm = (char *)comm,
                   .exe = (char *)exe,
                   .cgroup = (char *)cgroup,
                   .unit = (char *)unit };
        snprintf(r.name, sizeof(r.name), "%s", name);
        return r;
}

static void test_match_keys(void **state) {
        RuleSubject pg = { .comm = "postgres",
                           .exe = "/usr/lib/postgresql/15/bin/postgres",
                           .cgroup = "/system.slice/postgresql@15-main.service",
                           .unit = "postgresql@15-main.service" };
        Rule r;

        r = mk("a", RULE_ACTION_IGNORE, "postgr*", NULL, NULL, NULL);
        assert_true(rule_match(&r, &pg));
        r = mk("a", RULE_ACTION_IGNORE, "postgres?", NULL, NULL, NULL);
        assert_false(rule_match(&r, &pg));
        r = mk("a", RULE_ACTION_IGNORE, NULL, "/usr/lib/postgresql/*/postgres", NULL, NULL);
        assert_true(rule_match(&r, &pg)); /* '*' crosses '/' */
        r = mk("a", RULE_ACTION_IGNORE, NULL, NULL, "/system.slice", NULL);
        assert_true(rule_match(&r, &pg));
        r = mk("a", RULE_ACTION_IGNORE, NULL, NULL, "/system.slice/postgresql@15-main.service/",
               NULL);
        assert_true(rule_match(&r, &pg));
        r = mk("a", RULE_ACTION_IGNORE, NULL, NULL, "/system.slice/postgresql", NULL);
        assert_false(rule_match(&r, &pg)); /* a prefix of a name is not a parent */
        r = mk("a", RULE_ACTION_IGNORE, NULL, NULL, NULL, "postgresql@*.service");
        assert_true(rule_match(&r, &pg));
        /* every key must match */
        r = mk("a", RULE_ACTION_IGNORE, "postgres", NULL, "/user.slice", NULL);
        assert_false(rule_match(&r, &pg));
        r = mk("a", RULE_ACTION_IGNORE, "postgres", "/usr/*", "/system.slice", "*.service");
        assert_true(rule_match(&r, &pg));
        /* a key on an unknown fact does not match; a rule without keys never does */
        RuleSubject comm_only = { .comm = "postgres" };
        r = mk("a", RULE_ACTION_IGNORE, "postgres", "/usr/*", NULL, NULL);
        assert_false(rule_match(&r, &comm_only));
        r = mk("a", RULE_ACTION_IGNORE, NULL, NULL, NULL, NULL);
        assert_false(rule_match(&r, &pg));
        /* "/" covers every cgroup */
        assert_true(rule_cgroup_under("/a/b", "/"));
        assert_true(rule_cgroup_under("/a/b", "/a/b"));
        assert_true(rule_cgroup_under("/a/b/c", "/a/b"));
        assert_false(rule_cgroup_under("/a/bc", "/a/b"));
}

static void test_first_rule_wins(void **state) {
        Rule v[3] = { mk("first", RULE_ACTION_NEVER_PACK, "x*", NULL, NULL, NULL),
                      mk("second", RULE_ACTION_IGNORE, "xy", NULL, NULL, NULL),
                      mk("third", RULE_ACTION_IGNORE, NULL, NULL, "/", NULL) };
        RuleSet set = { .rules = v, .n_rules = 3 };
        RuleSubject xy = { .comm = "xy", .cgroup = "/a" }, z = { .comm = "z", .cgroup = "/a" },
                    unknown = { .comm = "z" };
        assert_ptr_equal(rules_match(&set, &xy), &v[0]);
        assert_ptr_equal(rules_match(&set, &z), &v[2]);
        assert_null(rules_match(&set, &unknown));
}

/* ignore > never-pack > latency-critical > pack-with; then the earlier rule. */
static void test_group_precedence(void **state) {
        Rule v[5] = { mk("pw", RULE_ACTION_PACK_WITH, "a", NULL, NULL, NULL),
                      mk("lc", RULE_ACTION_LATENCY_CRITICAL, "b", NULL, NULL, NULL),
                      mk("np", RULE_ACTION_NEVER_PACK, "c", NULL, NULL, NULL),
                      mk("ig", RULE_ACTION_IGNORE, "d", NULL, NULL, NULL),
                      mk("lc2", RULE_ACTION_LATENCY_CRITICAL, "e", NULL, NULL, NULL) };
        snprintf(v[0].partner, sizeof(v[0].partner), "lc");
        RuleSet set = { .rules = v, .n_rules = 5 };
        GroupRule gr;
        static const struct {
                int members[3]; /* rule indices, -1 = no rule */
                const char *want;
                RuleAction want_action;
        } cases[] = {
                { { -1, -1, -1 }, "", RULE_ACTION_NONE },
                { { 0, -1, -1 }, "pw", RULE_ACTION_PACK_WITH },
                { { 0, 1, -1 }, "lc", RULE_ACTION_LATENCY_CRITICAL },
                { { 1, 2, 0 }, "np", RULE_ACTION_NEVER_PACK },
                { { 2, 3, 1 }, "ig", RULE_ACTION_IGNORE },
                { { 4, 1, -1 }, "lc", RULE_ACTION_LATENCY_CRITICAL }, /* the earlier rule */
                { { -1, 3, -1 }, "ig", RULE_ACTION_IGNORE },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const Rule *m[3];
                for (int k = 0; k < 3; k++)
                        m[k] = cases[i].members[k] < 0 ? NULL : &v[cases[i].members[k]];
                rules_group_decide(&set, m, 3, &gr);
                assert_string_equal(gr.rule, cases[i].want);
                assert_int_equal(gr.action, cases[i].want_action);
        }
        const Rule *m[1] = { &v[0] };
        rules_group_decide(&set, m, 1, &gr);
        assert_string_equal(gr.partner, "lc");
        assert_false(gr.has_partner_group);
}

static GroupRule gr_of(const char *rule, RuleAction a, const char *partner) {
        GroupRule g = { .action = a };
        snprintf(g.rule, sizeof(g.rule), "%s", rule);
        snprintf(g.partner, sizeof(g.partner), "%s", partner ? partner : "");
        return g;
}

static void test_link_partners(void **state) {
        uint64_t ids[5] = { 7, 3, 9, 5, 11 };
        GroupRule v[5] = {
                gr_of("client", RULE_ACTION_PACK_WITH, "server"),
                gr_of("server", RULE_ACTION_LATENCY_CRITICAL, NULL),
                gr_of("server", RULE_ACTION_LATENCY_CRITICAL, NULL),
                gr_of("lonely", RULE_ACTION_PACK_WITH, "nobody"),
                gr_of("server", RULE_ACTION_IGNORE, NULL), /* a member won with ignore */
        };
        rules_link_partners(ids, v, 5);
        assert_true(v[0].has_partner_group);
        assert_int_equal(v[0].partner_group, 3); /* the lowest id of the partner's groups */
        assert_false(v[1].has_partner_group);
        assert_false(v[3].has_partner_group);
        ids[1] = 20;
        rules_link_partners(ids, v, 5);
        assert_int_equal(v[0].partner_group, 9); /* not 11: an ignored group is not packed */
}

static void test_action_names(void **state) {
        for (int a = 0; a < _RULE_ACTION_MAX; a++)
                assert_int_equal(rule_action_from_string(rule_action_to_string(a)), a);
        assert_int_equal(rule_action_from_string("pack"), -EINVAL);
        assert_null(rule_action_to_string(_RULE_ACTION_MAX));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_match_keys),       cmocka_unit_test(test_first_rule_wins),
                cmocka_unit_test(test_group_precedence), cmocka_unit_test(test_link_partners),
                cmocka_unit_test(test_action_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
