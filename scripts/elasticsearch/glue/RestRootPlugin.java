// The root endpoint, `GET /` and `HEAD /`, which the tarball's rest-root module serves and which is
// not published on Maven Central.
//
// Jaeger's Elasticsearch client needs it even when told the version and to skip its health check:
// once a bulk request fails on a lost connection, its bulk processor stops and probes `HEAD /` every
// 5 s until a node answers 2xx (olivere/elastic's waitForActiveConnection), and only then writes
// again. A node that answers 405 there never gets written to again after the first network fault.
//
// As rest-root does, the answer is the node's name, its cluster's name and UUID, and the build, and
// it is the cluster state action (`cluster:monitor/state`) run as the caller that reads the UUID: a
// user without a monitor privilege is refused, as rest-root's `cluster:monitor/main` refuses it.
package localnode.restroot;

import java.util.List;
import org.elasticsearch.Build;
import org.elasticsearch.action.admin.cluster.state.ClusterStateRequest;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.ClusterName;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.common.bytes.BytesArray;
import org.elasticsearch.common.io.stream.NamedWriteableRegistry;
import org.elasticsearch.common.settings.ClusterSettings;
import org.elasticsearch.common.settings.IndexScopedSettings;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.settings.SettingsFilter;
import org.elasticsearch.core.TimeValue;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestController;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.rest.action.RestActionListener;
import org.elasticsearch.xcontent.XContentBuilder;

public final class RestRootPlugin extends Plugin implements ActionPlugin {
    @Override
    public List<RestHandler> getRestHandlers(
        Settings settings,
        NamedWriteableRegistry namedWriteableRegistry,
        RestController restController,
        ClusterSettings clusterSettings,
        IndexScopedSettings indexScopedSettings,
        SettingsFilter settingsFilter,
        IndexNameExpressionResolver indexNameExpressionResolver,
        java.util.function.Supplier<DiscoveryNodes> nodesInCluster,
        java.util.function.Predicate<NodeFeature> clusterSupportsFeature
    ) {
        return List.of(new RootHandler(Node.NODE_NAME_SETTING.get(settings)));
    }

    static final class RootHandler extends BaseRestHandler {
        private final String nodeName;

        RootHandler(String nodeName) {
            this.nodeName = nodeName;
        }

        @Override
        public String getName() {
            return "main_action";
        }

        @Override
        public List<Route> routes() {
            return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
        }

        @Override
        protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
            ClusterStateRequest state = new ClusterStateRequest(TimeValue.THIRTY_SECONDS).clear().metadata(true);
            return channel -> client.admin().cluster().state(state, new RestActionListener<>(channel) {
                @Override
                protected void processResponse(org.elasticsearch.action.admin.cluster.state.ClusterStateResponse response)
                    throws Exception {
                    if (request.method() == RestRequest.Method.HEAD) {
                        channel.sendResponse(new RestResponse(RestStatus.OK, "application/json", BytesArray.EMPTY));
                        return;
                    }
                    Build build = Build.current();
                    ClusterName cluster = response.getClusterName();
                    XContentBuilder body = channel.newBuilder();
                    body.startObject()
                        .field("name", nodeName)
                        .field("cluster_name", cluster.value())
                        .field("cluster_uuid", response.getState().metadata().clusterUUID())
                        .startObject("version")
                        .field("number", build.qualifiedVersion())
                        .field("build_flavor", build.flavor())
                        .field("build_type", build.type().displayName())
                        .field("build_hash", build.hash())
                        .field("build_date", build.date())
                        .field("build_snapshot", build.isSnapshot())
                        .field("lucene_version", org.apache.lucene.util.Version.LATEST.toString())
                        .field("minimum_wire_compatibility_version", build.minWireCompatVersion())
                        .field("minimum_index_compatibility_version", build.minIndexCompatVersion())
                        .endObject()
                        .field("tagline", "You Know, for Search")
                        .endObject();
                    channel.sendResponse(new RestResponse(RestStatus.OK, body));
                }
            });
        }
    }
}
