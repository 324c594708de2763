package controller_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/welcome/controller"
)

func TestRenderPage(t *testing.T) {
	cases := map[string]struct {
		spec v1alpha1.WelcomeSpec
		want string
	}{
		"nothing to show": {
			want: "<dl class=\"profile\">\n</dl>\n",
		},
		"groups only": {
			spec: v1alpha1.WelcomeSpec{Groups: []string{"a", "b"}},
			want: "<dl class=\"profile\">\n<dt>Groups</dt><dd>a, b</dd>\n</dl>\n",
		},
		"markup in values is escaped": {
			spec: v1alpha1.WelcomeSpec{Email: `"x&y"@example.com`, Groups: []string{"<script>"}},
			want: "<dl class=\"profile\">\n" +
				"<dt>E-mail</dt><dd><a href=\"mailto:%22x&amp;y%22@example.com\">&#34;x&amp;y&#34;@example.com</a></dd>\n" +
				"<dt>Groups</dt><dd>&lt;script&gt;</dd>\n</dl>\n",
		},
		"user ID": {
			spec: v1alpha1.WelcomeSpec{UserID: ptr.To[int64](65535)},
			want: "<dl class=\"profile\">\n<dt>User ID</dt><dd>65535</dd>\n</dl>\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := controller.RenderPage(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("page (-want +got):\n%s", diff)
			}
		})
	}
}
