// Corner Shop: catalog, product page, cart, checkout and order history over /api/shop.
const money = (x) => '$' + x.toFixed(2);
const pages = {
  async catalog(main, s) {
    const cat = param('cat');
    main.append(h('h1', {}, cat ? 'Products: ' + cat : 'All products'));
    const cats = h('div', {class: 'row', id: 'categories'}, 'Categories: ');
    for (const c of ['kitchen', 'office', 'clothing']) {
      cats.append(h('a', {href: 'index.html?cat=' + c, 'data-category': c}, c), ' ');
    }
    main.append(cats);
    const table = h('table', {id: 'products'}, h('tr', {}, h('th', {}, 'Product'), h('th', {}, 'Category'),
                                                 h('th', {}, 'Price')));
    for (const p of s.products.filter((p) => !cat || p.category === cat)) {
      table.append(h('tr', {}, h('td', {}, h('a', {href: 'product.html?id=' + p.id, 'data-product': p.id}, p.name)),
                     h('td', {}, p.category), h('td', {class: 'price'}, money(p.price))));
    }
    main.append(table);
  },
  async product(main, s) {
    const p = s.products.find((p) => p.id === +param('id'));
    if (!p) { main.append(h('h1', {}, 'No such product')); return; }
    main.append(h('h1', {id: 'product-name'}, p.name), h('div', {class: 'row'}, 'Price: ' + money(p.price)),
                h('label', {for: 'qty'}, 'Quantity'), h('input', {type: 'text', id: 'qty', value: '1'}),
                h('div', {class: 'row'}, h('button', {id: 'add', onclick: async () => {
                  try {
                    await api('shop/cart', {id: p.id, qty: +document.getElementById('qty').value});
                    show('added', 'Added to your cart.');
                  } catch (e) { show('error', e.message); }
                }}, 'Add to cart')), h('div', {class: 'note', id: 'added'}));
  },
  async cart(main, s) {
    main.append(h('h1', {}, 'Your cart'));
    if (!s.cart.length) { main.append(h('div', {id: 'empty'}, 'The cart is empty.')); return; }
    const table = h('table', {id: 'cart'});
    let total = 0;
    for (const item of s.cart) {
      total += item.qty * item.price;
      table.append(h('tr', {}, h('td', {}, item.name), h('td', {}, 'x ' + item.qty),
        h('td', {}, h('button', {'data-remove': item.id, onclick: async () => {
          await api('shop/remove', {id: item.id}); location.reload(); }}, 'Remove'))));
    }
    main.append(table, h('div', {class: 'row'}, 'Total: ' + money(total)),
                h('a', {href: 'checkout.html', id: 'checkout', class: 'button'}, 'Checkout'));
  },
  async checkout(main, s) {
    main.append(h('h1', {}, 'Checkout'),
      h('label', {for: 'name'}, 'Full name'), h('input', {type: 'text', id: 'name'}),
      h('label', {for: 'address'}, 'Address'), h('input', {type: 'text', id: 'address'}),
      h('label', {}, 'Shipping'),
      h('div', {}, h('input', {type: 'radio', name: 'shipping', id: 'ship-standard', value: 'standard', checked: ''}),
        h('label', {for: 'ship-standard', style: 'display:inline'}, ' Standard (free) ')),
      h('div', {}, h('input', {type: 'radio', name: 'shipping', id: 'ship-express', value: 'express'}),
        h('label', {for: 'ship-express', style: 'display:inline'}, ' Express ($9.00)')),
      h('div', {class: 'row'}, h('button', {id: 'place-order', onclick: async () => {
        try {
          await api('shop/order', {name: document.getElementById('name').value,
            address: document.getElementById('address').value,
            shipping: document.querySelector('input[name=shipping]:checked').value});
          location.href = 'thanks.html';
        } catch (e) { show('error', e.message); }
      }}, 'Place order')));
  },
  async thanks(main, s) {
    const last = s.orders[s.orders.length - 1];
    main.append(h('h1', {id: 'thanks'}, 'Thank you for your order' + (last ? ' #' + last.id : '')));
  },
  async orders(main, s) {
    main.append(h('h1', {}, 'Your orders'));
    const list = h('table', {id: 'orders'});
    for (const o of s.orders) {
      const names = Object.entries(o.items).map(([pid, q]) => s.products.find((p) => p.id === +pid).name + ' x ' + q);
      list.append(h('tr', {'data-order': o.id}, h('td', {}, '#' + o.id), h('td', {class: 'items'}, names.join(', ')),
                    h('td', {}, o.shipping)));
    }
    main.append(s.orders.length ? list : h('div', {id: 'no-orders'}, 'No orders yet.'));
  },
};
window.addEventListener('DOMContentLoaded', async () => {
  try { await pages[document.body.dataset.page](document.getElementById('main'), await api('shop/state')); }
  catch (e) { show('error', e.message); }
  document.body.dataset.ready = '1';
});
