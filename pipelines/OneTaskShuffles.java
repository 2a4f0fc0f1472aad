package kafkatap;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.CoalesceExec;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.exchange.ENSURE_REQUIREMENTS$;
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec;
import org.apache.spark.sql.internal.SQLConf;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * A Spark session extension (spark.sql.extensions): in a session where ENABLED is true, every shuffle Spark's planner
 * inserted to bring rows into one partition becomes a coalesce into one partition, the same rows in the same task
 * without writing and reading them back.
 *
 * Why: a one-partition run (kafkatap's small inputs) wants no shuffle at all, and Spark plans none only while it
 * believes each side of a join is at most spark.sql.maxSinglePartitionBytes. Its size estimate of a join is the
 * product of its sides' estimates, so after three or four joins it exceeds any setting, and every later join and
 * window gets a shuffle into one partition: 101 shuffle stages in one run over a 228k-frame capture, 432k rows
 * written and read back. Run after Spark's own EnsureRequirements, as a columnar rule's first step (Spark has no
 * other hook for a physical rule outside adaptive execution, which one-partition runs turn off).
 */
public final class OneTaskShuffles extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    /** The session setting that turns the rule on (kafkatap.pipelines.planner_extension.ENABLED). */
    public static final String ENABLED = "spark.kafkatap.oneTaskShuffles";

    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectColumnar(new AbstractFunction1<SparkSession, ColumnarRule>() {
            @Override
            public ColumnarRule apply(SparkSession session) {
                return new ColumnarRule() {
                    @Override
                    public Rule<SparkPlan> preColumnarTransitions() {
                        return new Rule<SparkPlan>() {
                            @Override
                            public SparkPlan apply(SparkPlan plan) {
                                boolean on = Boolean.parseBoolean(SQLConf.get().getConfString(ENABLED, "false"));
                                return on ? coalesced(plan) : plan;
                            }
                        };
                    }
                };
            }
        });
        return BoxedUnit.UNIT;
    }

    /** `plan` with each shuffle into one partition that Spark added for a requirement replaced by a coalesce. */
    static SparkPlan coalesced(SparkPlan plan) {
        List<SparkPlan> children = new ArrayList<>();
        boolean changed = false;
        for (SparkPlan child : CollectionConverters.asJava(plan.children())) {
            SparkPlan rewritten = coalesced(child);
            changed |= rewritten != child;
            children.add(rewritten);
        }
        SparkPlan node = changed ? plan.withNewChildren(CollectionConverters.asScala(children).toSeq()) : plan;
        // Only Spark's own shuffles: a user's repartition is asked for, and stays
        if (node instanceof ShuffleExchangeExec exchange && exchange.shuffleOrigin() == ENSURE_REQUIREMENTS$.MODULE$
                && exchange.outputPartitioning().numPartitions() == 1) {
            return new CoalesceExec(1, exchange.child());
        }
        return node;
    }
}
