#include "chat/jinja/ast.h"

namespace strata::jinja {
namespace {

// Moves e's subtrees onto `pending`, so that e itself is freed without recursing into them.
void detach_children(Expr* e, std::vector<ExprPtr>* pending) {
  for (ExprPtr& child : e->children)
    if (child) pending->push_back(std::move(child));
  for (auto& [name, value] : e->kwargs)
    if (value) pending->push_back(std::move(value));
  e->children.clear();
  e->kwargs.clear();
}

void detach_children(Stmt* s, StmtList* pending) {
  const auto take = [pending](StmtList* list) {
    for (auto& child : *list)
      if (child) pending->push_back(std::move(child));
    list->clear();
  };
  take(&s->body);
  take(&s->else_body);
  for (auto& branch : s->branches) take(&branch.second);
}

}  // namespace

// Each node popped from `pending` has its subtrees moved out before it dies, so its own
// destructor finds no children and the stack stays one frame deep whatever the tree's height.
Expr::~Expr() {
  if (children.empty() && kwargs.empty()) return;
  std::vector<ExprPtr> pending;
  detach_children(this, &pending);
  while (!pending.empty()) {
    ExprPtr e = std::move(pending.back());
    pending.pop_back();
    detach_children(e.get(), &pending);
  }
}

// Statements hold expressions, whose own destructors are iterative, so only the statement
// nesting needs the explicit stack here.
Stmt::~Stmt() {
  if (body.empty() && else_body.empty() && branches.empty()) return;
  StmtList pending;
  detach_children(this, &pending);
  while (!pending.empty()) {
    std::unique_ptr<Stmt> s = std::move(pending.back());
    pending.pop_back();
    detach_children(s.get(), &pending);
  }
}

}  // namespace strata::jinja
