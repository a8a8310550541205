// The viewer works without this file; it only asks before what cannot be undone and puts
// "/" on the search box, as most search pages do.
document.addEventListener("submit", (event) => {
  const question = event.target.getAttribute("data-confirm");
  if (question && !window.confirm(question)) event.preventDefault();
});
document.addEventListener("keydown", (event) => {
  const search = document.getElementById("q");
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (event.key === "/" && search && !typing) {
    event.preventDefault();
    search.focus();
  }
});
