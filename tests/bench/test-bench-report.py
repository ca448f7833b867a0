#!/usr/bin/env python3
"""Checks of bench.py's arithmetic on made-up runs (no workload is run, no
root needed): speed-ups by the metric's direction, the share of the
ceiling's gain and PASS/FAIL against the targets, the noise rule for a
ceiling that gains little, and other processes' CPU time when one of them
ends during a run.

    python3 tests/bench/test-bench-report.py
"""
import os
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def runs(values):
    return [{"value": v} for v in values]


class Report(unittest.TestCase):
    def summary(self, w, by_config):
        results = {w: {c: runs(v) for c, v in by_config.items()}}
        return bench.summarize(results, list(by_config), [w])[w]

    def test_rate_share_of_ceiling_gain(self):
        # Ceiling 2x the kernel, balanced 1.9x: 90% of the gain, the pair's target.
        s = self.summary("pair", {"kernel": [100, 100, 100], "balanced": [190, 190, 190],
                                  "power-first": [150, 160, 170], "ceiling": [200, 200, 200]})
        self.assertAlmostEqual(s["balanced"]["speedup_median"], 1.9)
        self.assertAlmostEqual(s["balanced"]["share_of_ceiling_gain"], 0.9)
        self.assertTrue(s["balanced"]["pass"])
        self.assertAlmostEqual(s["power-first"]["share_of_ceiling_gain"], 0.6)
        self.assertAlmostEqual(s["power-first"]["share_min"], 0.5)
        self.assertFalse(s["power-first"]["pass"])

    def test_time_metric_is_inverted(self):
        # pipe is usec/op: lower is better. Kernel 20, ceiling 10 (2x), placed 12.5
        # (1.6x). Its run includes placed's first ticks: a share, but no target.
        s = self.summary("pipe", {"kernel": [20.0], "balanced": [12.5], "ceiling": [10.0]})
        self.assertAlmostEqual(s["ceiling"]["speedup_median"], 2.0)
        self.assertAlmostEqual(s["balanced"]["share_of_ceiling_gain"], 0.6)
        self.assertNotIn("pass", s["balanced"])
        # A pair whose ceiling gains nothing must still not lose.
        s = self.summary("pipe", {"kernel": [20.0], "balanced": [22.0], "ceiling": [20.0]})
        self.assertFalse(s["balanced"]["pass"])

    def test_server_target_is_75_percent(self):
        s = self.summary("redis-1c", {"kernel": [1000], "balanced": [1150], "ceiling": [1200]})
        self.assertAlmostEqual(s["balanced"]["share_of_ceiling_gain"], 0.75)
        self.assertTrue(s["balanced"]["pass"])

    def test_ceiling_within_noise_holds_placed_to_no_loss(self):
        s = self.summary("udp-1c", {"kernel": [1000], "balanced": [960], "latency-first": [980],
                                    "ceiling": [1030]})
        self.assertNotIn("share_of_ceiling_gain", s["balanced"])
        self.assertFalse(s["balanced"]["pass"])
        self.assertTrue(s["latency-first"]["pass"])

    def test_no_loss_workload(self):
        s = self.summary("hackbench-l", {"kernel": [3.0], "balanced": [3.2], "power-first": [3.05]})
        self.assertNotIn("ceiling", s)
        self.assertFalse(s["balanced"]["pass"])  # 3.0 / 3.2 = 0.94x
        self.assertEqual(s["balanced"]["verdict"], "FAIL")
        self.assertTrue(s["power-first"]["pass"])  # 0.98x
        self.assertEqual(s["power-first"]["verdict"], "PASS")

    def test_median_interval(self):
        # The sign test's interval: with 24 values x_(7) and x_(18), 97.7%;
        # up to 8 values only min-max reaches 95%; 5 values cover 93.75%.
        lo, hi, cov = bench.median_interval(range(24, 0, -1))
        self.assertEqual((lo, hi), (7, 18))
        self.assertAlmostEqual(cov, 1 - 2 * (1 + 24 + 276 + 2024 + 10626 + 42504 + 134596) / 2 ** 24)
        self.assertEqual(bench.median_interval([3, 1, 4, 1, 5, 9, 2, 6])[:2], (1, 9))
        self.assertEqual(bench.median_interval(range(9))[:2], (1, 7))
        lo, hi, cov = bench.median_interval([5, 1, 4, 2, 3])
        self.assertEqual((lo, hi), (1, 5))
        self.assertAlmostEqual(cov, 0.9375)
        self.assertEqual(bench.median_interval([0.9]), (0.9, 0.9, 0.0))

    def test_no_loss_judged_on_the_interval(self):
        kernel = [100.0] * 12
        # A real loss, every repetition 7-12% down: FAIL.
        s = self.summary("fanout", {"kernel": kernel, "balanced": [88, 93, 90, 91, 89, 92,
                                                                   90, 88, 93, 91, 89, 92]})
        self.assertEqual(s["balanced"]["verdict"], "FAIL")
        self.assertFalse(s["balanced"]["pass"])
        self.assertLess(s["balanced"]["speedup_ci"][1], 0.97)
        # Within 2% either way: PASS.
        s = self.summary("fanout", {"kernel": kernel, "balanced": [98, 101, 99, 102, 100, 98,
                                                                   99, 101, 100, 102, 98, 99]})
        self.assertEqual(s["balanced"]["verdict"], "PASS")
        self.assertTrue(s["balanced"]["pass"])
        # Median 0.95x, but the repetitions spread 0.80-1.12x: the target is
        # inside the interval, not a pass and not a shown loss.
        s = self.summary("stream", {"kernel": kernel, "power-first": [80, 112, 95, 88, 105, 93,
                                                                     97, 84, 110, 95, 90, 101]})
        self.assertAlmostEqual(s["power-first"]["speedup_median"], 0.95)
        self.assertEqual(s["power-first"]["verdict"], "INCONCLUSIVE")
        self.assertFalse(s["power-first"]["pass"])
        lo, hi = s["power-first"]["speedup_ci"]
        self.assertTrue(lo < 0.97 <= hi)
        # Ratios are per repetition pair: a kernel that drifts with placed
        # is no loss.
        s = self.summary("fanout", {"kernel": [100, 80, 120, 90, 110, 100],
                                    "balanced": [99, 80, 119, 90, 111, 100]})
        self.assertEqual(s["balanced"]["verdict"], "PASS")

    def test_advise_configuration(self):
        self.assertEqual(bench.placed_config("balanced"), ("balanced", False))
        self.assertEqual(bench.placed_config("power-first-advise"), ("power-first", True))
        self.assertIsNone(bench.placed_config("kernel"))
        self.assertIsNone(bench.placed_config("ceiling-advise"))
        # Shown with its speed-up, not judged against the target.
        s = self.summary("stream", {"kernel": [20.0, 22.0], "power-first-advise": [19.0, 22.0],
                                    "power-first": [19.0, 21.0]})
        self.assertAlmostEqual(s["power-first-advise"]["speedup_median"], 0.975)
        self.assertNotIn("verdict", s["power-first-advise"])
        self.assertEqual(s["power-first"]["verdict"], "FAIL")

    def test_other_processes_ending_during_a_run(self):
        # Process 10 (10 s of CPU before the run) ends and is reaped by 5, whose
        # cutime then holds its whole life: only the 1 s it ran during the run
        # and the 0.5 s of 5 itself count; 20 started during the run.
        before = {(5, 1): 3.0, (10, 2): 10.0}
        after = {(5, 1): 3.0 + 0.5 + 11.0, (20, 9): 0.5}
        self.assertAlmostEqual(bench.foreign_load(before, after, 2.0), 1.0)

    def test_packing_speed(self):
        class A:
            tick_s = 1.0
        results = {"pair": {
            "balanced": [{"value": 1, "packed_after_s": t} for t in (1.8, 2.1, 2.9)],
            "power-first": [{"value": 1, "packed_after_s": t} for t in (1.5, 3.4, 2.0)],
            "latency-first": [{"value": 1, "packed_after_s": t} for t in (1.5, None, 2.0)],
            "ceiling": [{"value": 1, "packed_after_s": None}]}}
        rows = {l.split("|")[1].strip(): l for l in bench.packing_speed(
            A, results, ["balanced", "power-first", "latency-first", "ceiling"], ["pair"])
            if l.startswith("| ") and "profile" not in l}
        self.assertIn("2.10 s, worst 2.90 s", rows["balanced"])
        self.assertIn("PASS", rows["balanced"])
        self.assertIn("FAIL", rows["power-first"])  # 3.4 s > 3 ticks
        self.assertIn("1 of 3 never", rows["latency-first"])
        self.assertIn("FAIL", rows["latency-first"])
        self.assertNotIn("ceiling", rows)
        self.assertEqual(bench.packing_speed(A, results, ["balanced"], ["redis-1c"]), [])

    def test_figures(self):
        self.assertEqual(bench.fmt_val(73740), "73.7k")
        self.assertEqual(bench.fmt_val(1.2e6), "1.2M")
        self.assertEqual(bench.fmt_val(13.38), "13.38")


if __name__ == "__main__":
    unittest.main()
