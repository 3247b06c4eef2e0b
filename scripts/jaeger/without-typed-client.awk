# Jaeger's Elasticsearch client (github.com/elastic/go-elasticsearch/v9, elasticsearch.go) without
# its TypedClient: the type, NewTypedClient and the typedapi import. Jaeger calls NewClient and
# esapi only, but the typed client in the same package imports typedapi, some 840 generated
# packages of request and response types; without it the Jaeger binary compiles 1,019 packages
# instead of 1,863 (145 s against about 235, cold, alone). scripts/binaries.sh applies this to a
# copy of the module that Jaeger's go.mod is pointed at, and checks that the import is gone.
/^\t"github.com\/elastic\/go-elasticsearch\/v9\/typedapi"$/ { next }
/^\/\/ TypedClient represents/ || /^\/\/ NewTypedClient create/ { skip = 1 }
skip && /^}$/ { skip = 0; next }
!skip
